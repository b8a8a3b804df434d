//! The fuzz targets' properties (see `wulf::fuzzing` and `fuzz/`), checked
//! by proptest within `cargo test` in bounded time: on any input every
//! decoder returns (an error value or a message) without panicking, and
//! the decoders' memory stays within a small factor of the input's size.
//! A counting allocator measures each call's peak on its own thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use proptest::prelude::*;
use serde_json::Value;

struct Counting;

thread_local! {
    static CURRENT: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters are const-initialised thread-locals without destructors, so
// touching them never allocates or fails.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = CURRENT.try_with(|c| {
            let now = c.get() + layout.size();
            c.set(now);
            let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
        });
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _ = CURRENT.try_with(|c| c.set(c.get().saturating_sub(layout.size())));
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Peak bytes allocated on this thread during `f`, above what was live.
fn peak_of(f: impl FnOnce()) -> usize {
    let base = CURRENT.with(Cell::get);
    PEAK.with(|p| p.set(base));
    f();
    PEAK.with(Cell::get) - base
}

/// What a decoder may allocate for `len` input bytes.
fn allowance(len: usize) -> usize {
    64 * len + (256 << 10)
}

fn fixture() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/tcp-pingpong.json");
        std::fs::read_to_string(p).unwrap()
    })
}

/// Any f64 at all, with the edges of the range and the odd values
/// (denormals, -0, the largest, the smallest normal) drawn often: the
/// values a hostile file writes where a time or a rate goes.
pub(crate) fn extreme_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        2 => any::<f64>(),
        1 => prop::sample::select(vec![
            0.0,
            -0.0,
            5e-324,
            f64::MIN_POSITIVE,
            1e-300,
            f64::EPSILON,
            1e-2,
            1.0,
            1e15,
            1e18,
            1e300,
            1e308,
            f64::MAX,
            -1.0,
            -f64::MAX,
        ]),
        1 => 1e-6f64..1e6,
    ]
}

/// Any JSON value, a few levels deep.
pub(crate) fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        extreme_f64().prop_map(Value::from),
        ".{0,20}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replace the value at a random place of `doc` by `new`.
pub(crate) fn mutate(doc: &mut Value, mut pick: usize, new: Value) {
    let mut at = doc;
    loop {
        let children = match at {
            Value::Object(m) => m.len(),
            Value::Array(a) => a.len(),
            _ => 0,
        };
        if children == 0 || pick.is_multiple_of(4) {
            *at = new;
            return;
        }
        let i = (pick / 4) % children;
        pick /= 7;
        at = match at {
            Value::Object(m) => m.values_mut().nth(i).unwrap(),
            Value::Array(a) => &mut a[i],
            _ => unreachable!(),
        };
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn control_decoders_take_any_bytes(data in prop::collection::vec(any::<u8>(), 0..2048)) {
        let peak = peak_of(|| wulf::fuzzing::control_message(&data));
        prop_assert!(peak <= allowance(data.len()), "{peak} bytes for {}", data.len());
    }

    #[test]
    fn control_decoders_take_any_json(v in any_json()) {
        let text = v.to_string();
        wulf::fuzzing::control_message(text.as_bytes());
        // And shaped like a request, with any fields.
        if let Value::Object(mut m) = v {
            m.insert("cmd".into(), Value::String("setup".into()));
            wulf::fuzzing::control_message(Value::Object(m).to_string().as_bytes());
        }
    }

    #[test]
    fn unit_parsers_take_any_text(text in "\\PC{0,40}") {
        let peak = peak_of(|| wulf::fuzzing::units(text.as_bytes()));
        // Host lists may expand (bounded by their own limit): no allowance.
        prop_assert!(peak < 64 << 20, "{peak}");
    }

    #[test]
    fn unit_parsers_take_shaped_text(
        n in any::<u64>(), m in any::<u64>(),
        unit in prop_oneof![Just(""), Just("Ki"), Just("Gi"), Just("ms"), Just("h"), Just("e300")],
        sep in prop_oneof![Just(":"), Just(","), Just("-"), Just("[")],
    ) {
        let text = format!("{n}{unit}{sep}{m}{unit}");
        wulf::fuzzing::units(text.as_bytes());
        wulf::fuzzing::units(format!("node[{n}{sep}{m}]").as_bytes());
    }

    #[test]
    fn result_reader_takes_any_bytes(data in prop::collection::vec(any::<u8>(), 0..4096)) {
        let peak = peak_of(|| wulf::fuzzing::result_decoder(&data));
        prop_assert!(peak <= allowance(data.len()), "{peak} bytes for {}", data.len());
        wulf::fuzzing::result_file(&data);
    }
}

proptest! {
    // Each case decodes, analyses and draws a whole report: fewer cases.
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn damaged_results_are_refused_or_drawn_never_a_panic(pick in any::<usize>(), new in any_json()) {
        let mut doc: Value = serde_json::from_str(fixture()).unwrap();
        mutate(&mut doc, pick, new);
        let text = doc.to_string();
        let peak = peak_of(|| wulf::fuzzing::result_decoder(text.as_bytes()));
        prop_assert!(peak <= allowance(text.len()), "{peak} bytes for {}", text.len());
        wulf::fuzzing::result_file(text.as_bytes());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Odd results (few points, values from anywhere in the f64 range:
    /// zero, -0, denormals, 1e308, f64::MAX) are refused with the field
    /// named or drawn: the analysis and every exporter survive them, and
    /// a file of no points is always drawn.
    #[test]
    fn odd_but_valid_results_are_drawn(
        keep in 0usize..6,
        values in prop::collection::vec(extreme_f64(), 6 * 7),
        flat in any::<bool>(),
    ) {
        let mut doc: Value = serde_json::from_str(fixture()).unwrap();
        let points = doc["points"].as_array_mut().unwrap();
        points.truncate(keep);
        let fields = ["min_ns", "median_ns", "mean_ns", "p90_ns", "p99_ns", "ci_low_ns", "ci_high_ns"];
        for (i, p) in points.iter_mut().enumerate() {
            for (j, f) in fields.iter().enumerate() {
                let v = if flat { values[i] } else { values[i * fields.len() + j] };
                p[*f] = Value::from(v);
            }
            p["trials_ns"] = Value::from(vec![p["median_ns"].clone(); 3]);
        }
        let text = doc.to_string();
        let read = wulf::result::parse_result(&text, "odd");
        prop_assert!(read.is_ok() || keep > 0, "{read:?}");
        wulf::fuzzing::result_file(text.as_bytes());
    }
}

#[test]
fn the_fixture_itself_decodes_within_the_allowance() {
    // The property must be able to fail: a valid result exercises every
    // allocation of the decoder.
    let text = fixture();
    let peak = peak_of(|| {
        wulf::result::parse_result(text, "fixture").unwrap();
    });
    assert!(peak > 0);
    assert!(
        peak <= allowance(text.len()),
        "{peak} bytes for {}",
        text.len()
    );
}

//! The report of a full run (a dozen results) in a real headless browser,
//! at a narrow window (800 px) and a laptop's (1300 px): screenshots are
//! saved as test artifacts (target/test-artifacts/report-full-800.png and
//! report-full-1300.png), and a script run in the page checks what a reader
//! at that width would see. No table is clipped (each fits the window or
//! sits in a scroll container that does), the page itself does not scroll
//! sideways, no legend box covers a plotted point, every result has a
//! colour of its own (hiding one hides no other), and the first screen
//! opens with the answer: highlights, then the summary table.
//!
//! The dozen: four quick real sweeps (tcp, unix, shm, cma at 1 B, 1 KiB and
//! 64 KiB, 0.2 s each) beside the fixtures (tcp and unix of 93 sizes, the
//! memcpy baseline, four lab sweeps at four MTUs, tcp again with cold
//! buffers). Skipped without chromium unless WULF_REQUIRE_BROWSER=1.

use crate::common;
use common::*;

use std::path::{Path, PathBuf};

use crate::report_browser::{artifacts_dir, chromium_or_skip, console_errors, headless};

/// The script the test appends to the page: it writes its findings into
/// `data-checks` on the body (`name=value` items separated by `;`), which the dumped
/// DOM carries back.
const CHECKS: &str = r##"<script>
(function(){
  var out=[], vw=document.documentElement.clientWidth;
  function scroller(el){
    for(;el&&el!==document.body;el=el.parentElement){
      var o=getComputedStyle(el).overflowX;
      if(o==="auto"||o==="scroll") return el;
    }
    return null;
  }
  var tables=document.querySelectorAll("table"), clipped=[];
  tables.forEach(function(t,i){
    var r=t.getBoundingClientRect();
    if(r.width===0) return;
    var s=scroller(t);
    var box=s?s.getBoundingClientRect():r;
    // A scroll container must itself fit the window; a table outside one
    // must fit whole.
    if(box.right>vw+1||box.left<-1) clipped.push((t.className||"table")+i);
  });
  out.push("tables="+tables.length);
  out.push("clipped="+clipped.join(","));
  out.push("page_overflow="+(document.documentElement.scrollWidth>vw+1));
  var legends=0, covered=[];
  document.querySelectorAll("figure svg").forEach(function(svg){
    var boxes=[].slice.call(svg.querySelectorAll('rect[opacity="0.87"]'))
      .map(function(r){return r.getBoundingClientRect();})
      .filter(function(b){return b.width>0&&b.height>0;});
    legends+=boxes.length;
    svg.querySelectorAll("circle").forEach(function(c){
      var p=c.getBoundingClientRect();
      if(p.width===0) return;
      boxes.forEach(function(b){
        if(p.left<b.right&&p.right>b.left&&p.top<b.bottom&&p.bottom>b.top){
          var f=svg.closest("figure");
          covered.push(f&&f.id||"figure");
        }
      });
    });
  });
  out.push("legends="+legends);
  out.push("covered="+covered.filter(function(v,i,a){return a.indexOf(v)===i;}).join(","));
  var sw=[].slice.call(document.querySelectorAll("#summary .swatch"))
    .map(function(s){return s.style.background;});
  out.push("swatches="+sw.length);
  out.push("distinct_swatches="+sw.filter(function(v,i,a){return a.indexOf(v)===i;}).length);
  // Hide the first result: the other results' elements stay visible.
  var boxes=document.querySelectorAll("input[data-color]");
  var hid_others=0, hid_own=0;
  if(boxes.length>1){
    var first=boxes[0], c0=first.getAttribute("data-color");
    first.checked=false; first.dispatchEvent(new Event("change"));
    document.querySelectorAll("#charts svg [stroke], #charts svg [fill]").forEach(function(el){
      if(el.style.visibility!=="hidden") return;
      var mine=el.getAttribute("stroke")===c0||el.getAttribute("fill")===c0;
      if(mine) hid_own++; else hid_others++;
    });
  }
  out.push("toggles="+boxes.length);
  out.push("hid_own="+hid_own);
  out.push("hid_others="+hid_others);
  var first=document.querySelector("ul.highlights"), table=document.querySelector("table.summary");
  out.push("answer_top="+(first?Math.round(first.getBoundingClientRect().top):-1));
  out.push("table_top="+(table?Math.round(table.getBoundingClientRect().top):-1));
  out.push("page_height="+document.documentElement.scrollHeight);
  out.push("machines_in_full="+document.querySelectorAll("#machines pre.machine").length);
  out.push("machines_by_difference="+document.querySelectorAll("#machines pre.machine-diff").length);
  document.body.setAttribute("data-checks",out.join(";"));
})();
</script>
"##;

/// The four quick real sweeps, written under `dir`.
fn quick_sweeps(dir: &Path) -> Vec<PathBuf> {
    ["tcp", "unix", "shm", "cma"]
        .iter()
        .map(|t| {
            let out = dir.join(format!("{t}.json"));
            let o = run(&[
                "sweep",
                t,
                "--sizes",
                "1,1Ki,64Ki",
                "--budget",
                "0.2s",
                "--json",
                out.to_str().unwrap(),
            ]);
            assert!(o.status.success(), "{t}: {}", stderr(&o));
            out
        })
        .collect()
}

/// The dozen results: the quick sweeps and the fixtures.
fn dozen(dir: &Path) -> Vec<PathBuf> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut all = quick_sweeps(dir);
    for f in ["tcp-pingpong", "unix-pingpong", "memcpy-stream"] {
        all.push(fixtures.join(format!("{f}.json")));
    }
    for mtu in [1500, 3000, 4500, 9000] {
        all.push(fixtures.join(format!("study-mtu-buffers/mtu{mtu}-curve.json")));
    }
    let mut cold = json(&fixtures.join("tcp-pingpong.json"));
    cold["options"]["nocache"] = serde_json::Value::Bool(true);
    let cold_path = dir.join("tcp-cold.json");
    std::fs::write(&cold_path, serde_json::to_vec(&cold).unwrap()).unwrap();
    all.push(cold_path);
    assert_eq!(all.len(), 12);
    all
}

/// The `name=value` findings of the page's check script.
pub(crate) fn checks(dom: &str) -> Vec<(String, String)> {
    let at = dom.find("data-checks=\"").unwrap_or_else(|| {
        panic!(
            "the check script did not run: {}",
            &dom[..dom.len().min(800)]
        )
    });
    let rest = &dom[at + "data-checks=\"".len()..];
    let text = &rest[..rest.find('"').unwrap()];
    text.split(';')
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub(crate) fn get<'a>(c: &'a [(String, String)], key: &str) -> &'a str {
    c.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {key} in {c:?}"))
}

pub(crate) fn number(c: &[(String, String)], key: &str) -> i64 {
    get(c, key).parse().unwrap()
}

#[test]
fn a_dozen_results_read_at_800_and_1300_px() {
    let Some(browser) = chromium_or_skip() else {
        return;
    };
    let dir = tempdir();
    let report = file(&dir, "report.html");
    let mut args = vec!["report".to_string()];
    args.extend(dozen(dir.path()).iter().map(|p| p.display().to_string()));
    args.extend(["-o".to_string(), report.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&report).unwrap();
    // The page under test, with the check script before </body>.
    let checked = file(&dir, "checked.html");
    std::fs::write(
        &checked,
        html.replace("</body>", &format!("{CHECKS}</body>")),
    )
    .unwrap();

    for width in [800u32, 1300] {
        let size = format!("--window-size={width},1600");
        let url = format!("file://{}", checked.display());
        let (dom, log) = headless(&browser, dir.path(), &url, &["--dump-dom", &size]);
        let errors = console_errors(&log);
        assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
        let c = checks(&dom);
        eprintln!("{width} px: {c:?}");
        assert!(number(&c, "tables") >= 3, "{c:?}");
        assert_eq!(get(&c, "clipped"), "", "{width} px: tables clipped");
        assert_eq!(get(&c, "page_overflow"), "false", "{width} px");
        assert!(number(&c, "legends") >= 6, "{width} px: legends not found");
        assert_eq!(get(&c, "covered"), "", "{width} px: a legend covers data");
        assert_eq!(number(&c, "swatches"), 12);
        assert_eq!(number(&c, "distinct_swatches"), 12, "colours repeat");
        assert_eq!(number(&c, "toggles"), 11, "a toggle per transport");
        assert!(number(&c, "hid_own") > 0, "hiding a result hid nothing");
        assert_eq!(number(&c, "hid_others"), 0, "hiding one hid another");
        // The answer opens the page and the table follows on the first
        // screen: the window is 1600 px high.
        let (answer, table) = (number(&c, "answer_top"), number(&c, "table_top"));
        assert!(answer > 0 && answer < table, "{c:?}");
        assert!(table < 1600, "{width} px: the table starts at {table} px");
        // One machine described in full; the fixtures' other machines
        // (recorded on other VMs, the lab's nodes) by their differences.
        assert_eq!(number(&c, "machines_in_full"), 1, "{c:?}");
        assert!(number(&c, "machines_by_difference") < 12, "{c:?}");

        let shot = artifacts_dir().join(format!("report-full-{width}.png"));
        let _ = std::fs::remove_file(&shot);
        let arg = format!("--screenshot={}", shot.display());
        let url = format!("file://{}", report.display());
        let (_, log) = headless(&browser, dir.path(), &url, &[&arg, &size]);
        let png =
            std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}); log:\n{log}"));
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        let png_width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        assert_eq!(png_width, width, "the page forced a wider canvas");
        eprintln!("screenshot: {}", shot.display());
    }
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(
        text.contains("Fastest by size: "),
        "no answer on the first screen"
    );
}

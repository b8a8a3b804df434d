//! Bounds on the text of a result file, checked in one pass before it is
//! decoded: no string longer than [`MAX_STRING_BYTES`], no array of more
//! than [`MAX_ARRAY_ITEMS`] entries, and at most [`MAX_STRING_TOTAL_BYTES`]
//! of string values in all.
//!
//! The size cap ([`super::MAX_RESULT_BYTES`]) bounds the file, not what
//! the report makes of it: a sweep file whose warning was 250 MB of `<`
//! became a 1 GB escaped string and a 6.36 GB peak in the HTML report, and
//! ten million empty warnings (3 bytes of JSON each, 24 bytes of `String`
//! each) 2.27 GB. Text is what grows when drawn (escaping, tables), so its
//! total is bounded far below the file's; numbers are not drawn one by one.
//! Every wulf result is far inside these bounds: its longest strings are
//! formulas and warnings of a few hundred bytes.

/// Longest string (a key or a value) a result may hold, bytes of JSON.
pub const MAX_STRING_BYTES: usize = 64 << 10;

/// Most entries of one array (a point's trials, a matrix's cells).
pub const MAX_ARRAY_ITEMS: usize = 1 << 20;

/// Most bytes of string values a result may hold. Keys count only when
/// longer than [`MAX_FIELD_NAME_BYTES`]: the field names of wulf's types
/// are matched, never stored, while a free-form map (`hpcc`, an MPI
/// `env`) stores its keys.
pub const MAX_STRING_TOTAL_BYTES: usize = 32 << 20;

/// Longest key not counted as text (wulf's longest field name is 31).
pub const MAX_FIELD_NAME_BYTES: usize = 64;

/// Most bytes of JSON in `options.transport`, the one free-form value of a
/// result (a transport's settings, a few hundred bytes): decoded as
/// untyped JSON, a number of 2 bytes there takes 32.
pub const MAX_FREE_FORM_BYTES: usize = 1 << 20;

/// Where the scan is inside one object or array.
enum Frame {
    /// An object: the last key read (a byte range of the text), and
    /// whether the next string is a key.
    Object {
        key: (usize, usize),
        expect_key: bool,
    },
    /// An array: the index of the entry being read.
    Array { index: usize },
}

/// Check `text` against the bounds of the module notes; the error names
/// the JSON path of the first offending value (`warnings[0]`). Text that
/// is not JSON passes: the decoder says why it is not.
pub fn check(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut total = 0usize;
    // Where the free-form value began, and the depth it began at.
    let mut free_from: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i + 1);
                let len = end - i - 1;
                let is_key = matches!(
                    stack.last(),
                    Some(Frame::Object {
                        expect_key: true,
                        ..
                    })
                );
                if len > MAX_STRING_BYTES {
                    return Err(format!(
                        "{}: a string of {len} bytes, longer than a wulf result holds ({MAX_STRING_BYTES} at most)",
                        path(text, &stack)
                    ));
                }
                if let Some(Frame::Object { key, expect_key }) = stack.last_mut() {
                    if *expect_key {
                        *key = (i + 1, end);
                        *expect_key = false;
                    }
                }
                if !is_key || len > MAX_FIELD_NAME_BYTES {
                    total += len;
                    if total > MAX_STRING_TOTAL_BYTES {
                        return Err(format!(
                            "{}: the strings reach {total} bytes, more text than a wulf result holds \
                             ({MAX_STRING_TOTAL_BYTES} at most)",
                            path(text, &stack)
                        ));
                    }
                }
                i = end;
            }
            b'{' | b'[' => {
                if free_from.is_none() && is_free_form(text, &stack) {
                    free_from = Some((i, stack.len()));
                }
                stack.push(match bytes[i] {
                    b'{' => Frame::Object {
                        key: (0, 0),
                        expect_key: true,
                    },
                    _ => Frame::Array { index: 0 },
                });
            }
            b'}' | b']' => {
                stack.pop();
                if let Some((from, depth)) = free_from {
                    if i - from > MAX_FREE_FORM_BYTES {
                        return Err(format!(
                            "{}: {} bytes of settings, more than a wulf result holds ({MAX_FREE_FORM_BYTES} at most)",
                            path(text, &stack),
                            i - from
                        ));
                    }
                    if stack.len() == depth {
                        free_from = None;
                    }
                }
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                Some(Frame::Array { index }) => {
                    *index += 1;
                    if *index >= MAX_ARRAY_ITEMS {
                        return Err(format!(
                            "{}: more than {MAX_ARRAY_ITEMS} entries, more than a wulf result holds",
                            path(text, &stack)
                        ));
                    }
                }
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// Whether a container opening here is the value of `options.transport`,
/// the one free-form value (see [`MAX_FREE_FORM_BYTES`]).
fn is_free_form(text: &str, stack: &[Frame]) -> bool {
    let key = |f: &Frame| match f {
        Frame::Object { key: (a, b), .. } => text.get(*a..*b),
        Frame::Array { .. } => None,
    };
    stack.len() == 2 && key(&stack[0]) == Some("options") && key(&stack[1]) == Some("transport")
}

/// Index of the quote that closes the string whose contents start at
/// `from` (the text's length when it is unterminated).
fn string_end(bytes: &[u8], from: usize) -> usize {
    let mut j = from;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'"' => return j,
            _ => j += 1,
        }
    }
    bytes.len()
}

/// The JSON path of where the scan is (`points[3].warnings`), keys cut
/// to 64 bytes.
fn path(text: &str, stack: &[Frame]) -> String {
    let mut p = String::new();
    for f in stack {
        match f {
            Frame::Object { key: (a, b), .. } if b > a => {
                let key = text.get(*a..(*b).min(a + 64)).unwrap_or("?");
                if !p.is_empty() {
                    p.push('.');
                }
                p.push_str(key);
            }
            Frame::Object { .. } => {}
            Frame::Array { index } => p.push_str(&format!("[{index}]")),
        }
    }
    if p.is_empty() {
        p.push('.');
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_within_the_bounds_pass() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tcp-pingpong.json"
        );
        check(&std::fs::read_to_string(path).unwrap()).unwrap();
        check(r#"{"a":["x\"y",{"b":"\\"}],"c":1}"#).unwrap();
    }

    #[test]
    fn a_long_string_is_named_by_its_path() {
        let text = format!(
            r#"{{"host":{{"name":"a"}},"warnings":["ok","{}"]}}"#,
            "<".repeat(MAX_STRING_BYTES + 1)
        );
        let e = check(&text).unwrap_err();
        assert!(e.starts_with("warnings[1]: a string of"), "{e}");
    }

    #[test]
    fn the_free_form_settings_are_bounded() {
        let numbers = "1,".repeat(MAX_FREE_FORM_BYTES / 2);
        let text = format!(r#"{{"options":{{"transport":{{"x":[{numbers}1]}}}},"w":[]}}"#);
        let e = check(&text).unwrap_err();
        assert!(e.contains("bytes of settings"), "{e}");
        assert!(e.starts_with("options.transport"), "{e}");
        check(r#"{"options":{"transport":{"x":[1,2]}},"points":[{"a":[1]}]}"#).unwrap();
    }

    #[test]
    fn many_entries_and_much_text_are_refused() {
        let many = format!(r#"{{"warnings":[{}""]}}"#, "\"\",".repeat(MAX_ARRAY_ITEMS));
        let e = check(&many).unwrap_err();
        assert!(e.starts_with("warnings[1048576]: more than"), "{e}");
        let one = "x".repeat(MAX_STRING_BYTES);
        let text = format!(r#"{{"w":[{}"{one}"]}}"#, format!("\"{one}\",").repeat(512));
        let e = check(&text).unwrap_err();
        assert!(e.contains("more text than"), "{e}");
    }
}

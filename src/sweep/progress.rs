//! How a sweep tells of its progress: one [`Reporter`] that hears of each
//! point as it is measured (criterion's habit: one trait, an
//! implementation per way of showing it).
//!
//! Implementations: [`Quiet`] (nothing: probes, a matrix's cells, the
//! soakers' pairs), [`JsonLines`] (one JSON object per point: an MPI job's
//! rank 0 writes them to the job's progress file, which the launching side
//! follows), and the terminal bar of the commands
//! (`plan::SizesBar`, indicatif). Tests collect the points
//! ([`Collect`]).
//!
//! A reporter is called between points, never inside a timing loop, so
//! what it does (drawing, writing a line) costs no measured time.

use std::io::Write;

use crate::result::Point;

/// Told of each point of a sweep as it is measured.
pub trait Reporter {
    /// `point` was measured (the sweep's sizes in ascending order; the
    /// confirmation pass reports nothing).
    fn point(&mut self, point: &Point);
}

/// Reports nothing.
pub struct Quiet;

impl Reporter for Quiet {
    fn point(&mut self, _point: &Point) {}
}

/// One JSON object per point, a line each, on the writer it owns.
pub struct JsonLines<W: Write>(pub W);

impl<W: Write> Reporter for JsonLines<W> {
    fn point(&mut self, point: &Point) {
        // Progress is advisory: a line that cannot be written (a full
        // disk, a closed pipe) must not end the sweep it reports on.
        if let Ok(line) = serde_json::to_string(point) {
            let _ = writeln!(self.0, "{line}");
        }
    }
}

/// Keeps every point reported, for tests.
#[cfg(test)]
#[derive(Default)]
pub struct Collect(pub Vec<Point>);

#[cfg(test)]
impl Reporter for Collect {
    fn point(&mut self, point: &Point) {
        self.0.push(point.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_writes_one_readable_object_per_point() {
        let mut out = JsonLines(Vec::new());
        for bytes in [8, 64] {
            out.point(&super::super::point::test_point(bytes, 1000.0));
        }
        let text = String::from_utf8(out.0).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        let back: Vec<Point> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(back.iter().map(|p| p.bytes).collect::<Vec<_>>(), [8, 64]);
        assert_eq!(back[1].median_ns, 1000.0);
    }

    #[test]
    fn quiet_and_collect_through_the_trait() {
        let mut quiet = Quiet;
        let mut collect = Collect::default();
        for r in [&mut quiet as &mut dyn Reporter, &mut collect] {
            r.point(&super::super::point::test_point(8, 1.0));
        }
        assert_eq!(collect.0.len(), 1);
    }
}

//! The figures of a matrix cell without its trials: what the coordinator
//! keeps of each cell while the cells themselves stream to disk
//! ([`crate::cluster::cells`]), and what the analysis, the terminal table
//! and the exporters read.
//!
//! A [`MatrixCell`] with its trials dropped still holds two whole sweep
//! points (percentiles, CPU costs, limits, tails): about 1.8 KiB a cell in
//! the coordinator's memory, 1.8 GB for the 999,000 cells of a 1,000-node
//! matrix. [`CellFigures`] holds what is read of them, in
//! [`CELL_FIGURES_MAX_BYTES`] or less: about 100 MB at 1,000 nodes.
//! Not part of the result file: that keeps every cell whole.
//! [`MatrixFigures`] is a whole matrix so: what reports read (`wulf
//! report` of a 1,000-node matrix holds about 128 MB, not 1.8 GB).

use super::matrix::{CellNet, MatrixCell, MatrixResult};
use super::Point;

/// Upper bound of `size_of::<CellFigures>()` (checked by a test).
pub const CELL_FIGURES_MAX_BYTES: usize = 128;

/// The figures of one point of a cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    /// Median time, ns (one-way for a ping-pong, per message for a stream).
    pub median_ns: f64,
    /// Lower end of the median's confidence interval, ns.
    pub ci_low_ns: f64,
    /// Upper end of the median's confidence interval, ns.
    pub ci_high_ns: f64,
    /// Throughput at the median, bits/s.
    pub bits_per_s: f64,
    /// Trials kept (saturating at `u32::MAX`).
    pub trials: u32,
    /// Whether the point was flagged noisy.
    pub noisy: bool,
}

impl From<&Point> for Figure {
    fn from(p: &Point) -> Figure {
        Figure {
            median_ns: p.median_ns,
            ci_low_ns: p.ci_low_ns,
            ci_high_ns: p.ci_high_ns,
            bits_per_s: p.bits_per_s,
            trials: u32::try_from(p.trials).unwrap_or(u32::MAX),
            noisy: p.noisy,
        }
    }
}

/// The figures of one directed cell (see [`MatrixCell`] for the fields'
/// meaning).
#[derive(Debug, Clone, PartialEq)]
pub struct CellFigures {
    /// Index of the measuring node.
    pub from: usize,
    /// Index of the node it measured against.
    pub to: usize,
    /// Round or step.
    pub round: u32,
    /// Time the measuring agent spent on the cell, seconds.
    pub measure_s: f32,
    /// The ping-pong point's figures.
    pub latency: Option<Figure>,
    /// The stream point's figures.
    pub bandwidth: Option<Figure>,
    /// Why the cell failed, when it did (boxed: most cells have none).
    pub error: Option<Box<str>>,
    /// What only the load patterns measure (boxed: a `pairs` matrix, the
    /// large one, has none).
    pub load: Option<Box<LoadFigures>>,
}

/// The figures of a cell that only some cells have: what only load
/// patterns measure, and the kernel's counters (boxed with them so that a
/// cell's figures stay within [`CELL_FIGURES_MAX_BYTES`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LoadFigures {
    /// The measuring node's TCP and interface counters over the cell.
    pub net: Option<CellNet>,
    /// The small-message stream's bandwidth, bits/s.
    pub rate_bits_per_s: Option<f64>,
    /// The small-message stream's messages per second.
    pub rate_messages_per_s: Option<f64>,
    /// The pair's bandwidth alone, bits/s.
    pub alone_bits_per_s: Option<f64>,
    /// Cut at its deadline: partial figures ([`MatrixCell::cut`]).
    pub cut: bool,
}

impl CellFigures {
    /// Median one-way latency, ns.
    pub fn latency_ns(&self) -> Option<f64> {
        self.latency.map(|p| p.median_ns)
    }

    /// Median bandwidth, bits/s.
    pub fn bits_per_s(&self) -> Option<f64> {
        self.bandwidth.map(|p| p.bits_per_s)
    }

    /// The load patterns' figures (all absent for a `pairs` cell).
    pub fn load(&self) -> LoadFigures {
        self.load.as_deref().copied().unwrap_or_default()
    }

    /// Whether the cell was cut at its deadline ([`MatrixCell::cut`]).
    pub fn cut(&self) -> bool {
        self.load.as_deref().is_some_and(|l| l.cut)
    }

    /// Whether this is a suspicious cell measured again alone.
    pub fn is_remeasure(&self) -> bool {
        self.round == u32::MAX
    }

    /// The measuring node's kernel counters over the cell, when read.
    pub fn net(&self) -> Option<CellNet> {
        self.load.as_deref().and_then(|l| l.net)
    }
}

impl From<&MatrixCell> for CellFigures {
    fn from(c: &MatrixCell) -> CellFigures {
        let load = LoadFigures {
            net: c.net,
            rate_bits_per_s: c.rate.as_ref().map(|p| p.bits_per_s),
            // A stream's median is the time per message.
            rate_messages_per_s: c
                .rate
                .as_ref()
                .filter(|p| p.median_ns > 0.0)
                .map(|p| 1e9 / p.median_ns),
            alone_bits_per_s: c.alone_bandwidth.as_ref().map(|p| p.bits_per_s),
            cut: c.cut,
        };
        CellFigures {
            from: c.from,
            to: c.to,
            // A re-measure's round is none of the rounds (see
            // `is_remeasure`): the figures stay within their size.
            round: if c.remeasure {
                u32::MAX
            } else {
                u32::try_from(c.round).unwrap_or(u32::MAX - 1)
            },
            measure_s: c.measure_s as f32,
            latency: c.latency.as_ref().map(Figure::from),
            bandwidth: c.bandwidth.as_ref().map(Figure::from),
            error: c.error.as_deref().map(Box::from),
            load: (load != LoadFigures::default()).then(|| Box::new(load)),
        }
    }
}

/// The figures of every cell of `cells`, in order.
pub fn figures_of(cells: &[MatrixCell]) -> Vec<CellFigures> {
    cells.iter().map(CellFigures::from).collect()
}

/// A matrix result as reports read it: everything but the cells, which are
/// kept as figures only (see the module docs). Derefs to the result, so
/// its header, nodes and analysis read as they do on a [`MatrixResult`].
#[derive(Debug, Clone)]
pub struct MatrixFigures {
    /// The result, its `cells` empty.
    pub result: MatrixResult,
    /// The figures of its cells, in the file's order.
    pub figures: Vec<CellFigures>,
}

impl From<MatrixResult> for MatrixFigures {
    fn from(mut result: MatrixResult) -> MatrixFigures {
        let figures = figures_of(&result.cells);
        result.cells = Vec::new();
        MatrixFigures { result, figures }
    }
}

impl std::ops::Deref for MatrixFigures {
    type Target = MatrixResult;

    fn deref(&self) -> &MatrixResult {
        &self.result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_stay_small() {
        // The coordinator holds one per cell: N² of them.
        assert!(
            std::mem::size_of::<CellFigures>() <= CELL_FIGURES_MAX_BYTES,
            "{} bytes",
            std::mem::size_of::<CellFigures>()
        );
    }

    #[test]
    fn figures_carry_what_the_cell_says() {
        let point = |bytes: u64, median_ns: f64| {
            let mut p = crate::sweep::engine::test_point(bytes, median_ns);
            p.ci_low_ns = median_ns - 1.0;
            p.ci_high_ns = median_ns + 2.0;
            p.trials = 7;
            p.noisy = true;
            p
        };
        let cell = MatrixCell {
            from: 2,
            to: 5,
            round: 3,
            latency: Some(point(8, 4000.0)),
            bandwidth: Some(point(1 << 22, 40e6)),
            rate: None,
            alone_bandwidth: None,
            error: Some("late".into()),
            measure_s: 1.5,
            net: None,
            remeasure: false,
            intra_node: false,
            cut: false,
        };
        let f = CellFigures::from(&cell);
        assert_eq!((f.from, f.to, f.round, f.measure_s), (2, 5, 3, 1.5));
        assert_eq!(f.latency_ns(), Some(4000.0));
        assert_eq!(
            f.bits_per_s(),
            cell.bandwidth.as_ref().map(|p| p.bits_per_s)
        );
        let l = f.latency.unwrap();
        assert_eq!(
            (l.ci_low_ns, l.ci_high_ns, l.trials, l.noisy),
            (3999.0, 4002.0, 7, true)
        );
        assert_eq!(f.error.as_deref(), Some("late"));
        assert!(f.load.is_none(), "a pairs cell has no load figures");
        let loaded = CellFigures::from(&MatrixCell {
            rate: Some(point(8, 250.0)),
            alone_bandwidth: Some(point(1 << 22, 20e6)),
            ..cell.clone()
        });
        let load = loaded.load();
        assert_eq!(load.rate_messages_per_s, Some(4e6));
        let near = |a: Option<f64>, b: f64| a.is_some_and(|a| (a / b - 1.0).abs() < 1e-9);
        assert!(near(load.rate_bits_per_s, 8.0 * 8.0 / 250e-9), "{load:?}");
        assert!(
            near(load.alone_bits_per_s, (1u64 << 22) as f64 * 8.0 / 20e-3),
            "{load:?}"
        );
        let none = CellFigures::from(&MatrixCell {
            latency: None,
            bandwidth: None,
            error: None,
            ..cell
        });
        assert_eq!(
            (none.latency_ns(), none.bits_per_s(), none.error),
            (None, None, None)
        );
    }
}

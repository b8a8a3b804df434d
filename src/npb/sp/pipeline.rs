//! The stage pipeline of the multi-partition line solves, shared by SP
//! (scalar pentadiagonal) and BT (5x5 block tridiagonal): along axis `d`
//! the forward elimination runs stage by stage through this rank's cells
//! from the low slab up, each stage's boundary rows sent on to the
//! successor; then the back substitution runs from the high slab down,
//! each stage's first solved rows sent back to the predecessor. `p - 1`
//! messages each way per axis and rank.
//!
//! Every exchange follows NPB's `x_solve`: the send of the previous
//! stage's rows and the receive of this stage's are posted together
//! ([`Communicator::isend`], [`Communicator::irecv`]), the solver's
//! `prepare` builds the stage's coefficients while they travel (NPB's
//! `lhsx` between `MPI_Irecv` and `MPI_Waitall`), then both complete
//! ([`Communicator::wait_pair`]). The partner pattern is the same on every
//! rank (a shift along a ring of ranks), so none can deadlock. A backend
//! that moves nothing before the wait (its requests stay deferred) gets
//! the plain per-line order instead: building ahead would only cost
//! memory traffic there. What is carried per line and how a line is
//! eliminated and solved is the solver's: it comes in as the two carries
//! and the closures.

use anyhow::Result;

use super::cells::{Cell, Layout};
use crate::comm::Communicator;

/// A solver's step that builds line `l`'s coefficients ahead of its
/// elimination (see [`run`]).
pub(crate) type Prepare<'a, S, X> = dyn Fn(&[Cell], &mut S, Line<X>, usize) + 'a;

/// Values carried per line between stages, each way.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Carries {
    /// From a stage's last rows to the successor's elimination.
    pub forward: usize,
    /// From a stage's first solved rows back to the predecessor.
    pub backward: usize,
}

/// Message buffers, grown once to the largest need, and the lines of the
/// cell at hand.
#[derive(Debug, Default)]
pub(crate) struct Pipe {
    send: Vec<f64>,
    recv: Vec<f64>,
    lines: Vec<usize>,
}

fn grow(buf: &mut Vec<f64>, len: usize) {
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
}

/// One line to eliminate or solve: the cell's index, the line's index
/// among the cell's, and its first point as `starts` gave it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line<X> {
    /// Index of the cell in the rank's cells.
    pub cell: usize,
    /// The line's first point (as `starts` wrote it).
    pub first: usize,
    /// What `starts` returned for the cell (the solver's line geometry).
    pub shape: X,
    /// The line's index among the cell's when `prepare` built it ahead.
    pub built: Option<usize>,
}

/// Runs the pipeline along `d`. `starts(cell, d, firsts)` writes the first
/// point of each line of a cell (in the order every rank uses for
/// messages) and returns what the closures need about them; `forward`
/// eliminates a line given the carry from the predecessor (none in the
/// first slab) and writes its carry on; `backward` solves it given the
/// carry from the successor (none in the last slab) and writes its own.
/// All get `state`, the solver's scratch they share. `prepare`, where the
/// solver has one, builds a line's coefficients ahead, while the stage's
/// messages travel; `forward` then sees the line's `built` index.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<X: Copy, S>(
    comm: &dyn Communicator,
    layout: &Layout,
    cells: &mut [Cell],
    d: usize,
    pipe: &mut Pipe,
    carries: Carries,
    state: &mut S,
    starts: impl Fn(&Cell, usize, &mut Vec<usize>) -> X,
    prepare: Option<&Prepare<'_, S, X>>,
    forward: impl Fn(&mut [Cell], &mut S, Line<X>, Option<&[f64]>, &mut [f64]),
    backward: impl Fn(&mut [Cell], &mut S, Line<X>, Option<&[f64]>, &mut [f64]),
) -> Result<()> {
    let p = layout.p;
    let lines_of = |cells: &[Cell], s: usize| super::adi::line_count(&cells[layout.slice[d][s]], d);
    let most = (0..p).map(|s| lines_of(cells, s)).max().unwrap_or(0);
    let widest = carries.forward.max(carries.backward);
    grow(&mut pipe.send, widest * most);
    grow(&mut pipe.recv, widest * most);
    for s in 0..p {
        let c = layout.slice[d][s];
        let shape = starts(&cells[c], d, &mut pipe.lines);
        let n = carries.forward;
        let mut built = false;
        if s > 0 {
            let sent = n * lines_of(cells, s - 1);
            let want = n * pipe.lines.len();
            let (to, from) = (layout.succ[d], layout.pred[d]);
            let out = comm.isend(to, &pipe.send[..sent])?;
            let inp = comm.irecv(from, &mut pipe.recv[..want])?;
            if let Some(prepare) = prepare.filter(|_| !(out.is_deferred() && inp.is_deferred())) {
                for (l, &first) in pipe.lines.iter().enumerate() {
                    let line = Line {
                        cell: c,
                        first,
                        shape,
                        built: None,
                    };
                    prepare(cells, state, line, l);
                }
                built = true;
            }
            comm.wait_pair(out, inp)?;
        }
        let out_len = if s + 1 < p { n } else { 0 };
        for (l, &first) in pipe.lines.iter().enumerate() {
            let carry_in = (s > 0).then(|| &pipe.recv[n * l..n * (l + 1)]);
            let out = &mut pipe.send[out_len * l..out_len * (l + 1)];
            let line = Line {
                cell: c,
                first,
                shape,
                built: built.then_some(l),
            };
            forward(cells, state, line, carry_in, out);
        }
    }
    for s in (0..p).rev() {
        let c = layout.slice[d][s];
        let shape = starts(&cells[c], d, &mut pipe.lines);
        let n = carries.backward;
        if s + 1 < p {
            let sent = n * lines_of(cells, s + 1);
            let want = n * pipe.lines.len();
            let (to, from) = (layout.pred[d], layout.succ[d]);
            let out = comm.isend(to, &pipe.send[..sent])?;
            let inp = comm.irecv(from, &mut pipe.recv[..want])?;
            comm.wait_pair(out, inp)?;
        }
        let out_len = if s > 0 { n } else { 0 };
        for (l, &first) in pipe.lines.iter().enumerate() {
            let carry_in = (s + 1 < p).then(|| &pipe.recv[n * l..n * (l + 1)]);
            let out = &mut pipe.send[out_len * l..out_len * (l + 1)];
            let line = Line {
                cell: c,
                first,
                shape,
                built: None,
            };
            backward(cells, state, line, carry_in, out);
        }
    }
    Ok(())
}

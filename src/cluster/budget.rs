//! How a matrix keeps its `--budget` (issue 35 item 5): the rounds, the
//! cells streamed again alone and the re-measures of suspicious cells all
//! come out of one budget, counted in wall time from the first round.
//!
//! A cell's sweep costs more than the budget it is given: connecting,
//! the fingerprints, the warm-up and the engine's fewest trials come on
//! top (0.1-0.5 s a cell on a 2-vCPU machine, which made a 60 s matrix
//! take 94-104 s). So the budget is not divided once up front: each slot
//! (a step, or a pair with `--serial`) gets what is left of the rounds'
//! share divided among the slots left, less the overhead the slots so far
//! were seen to add. A run whose first cells overrun thus gives the later
//! ones less, and the rounds end near their share whatever the overhead.
//! A share ([`REMEASURE_SHARE`]) is kept back for the re-measures, which
//! get what is left of the whole budget; those that do not fit are not
//! measured (and so not confirmed, never named), and say so.
//!
//! Pure bookkeeping, no clock of its own: the caller passes the elapsed
//! time, so a unit test can play a whole schedule with made-up overheads.

use std::time::Duration;

/// Share of the budget kept for re-measuring suspicious cells after the
/// rounds.
pub const REMEASURE_SHARE: f64 = 0.2;

/// Least budget a cell is given, however late it comes: a few trials of
/// each of its sweeps. Below it the budget cannot be kept, and the result
/// says so.
pub const CELL_FLOOR: Duration = Duration::from_millis(30);

/// The bookkeeping of one matrix's budget.
#[derive(Debug, Clone)]
pub struct Keeper {
    /// The whole budget (`--budget`).
    total: Duration,
    /// What the rounds may use: the budget less the re-measures' share.
    rounds: Duration,
    /// Sum of the overheads seen (wall time of a measuring call beyond the
    /// budget it was given), and how many calls they came from.
    overhead_sum: Duration,
    overhead_calls: u32,
    /// A slot's even share of the rounds, fixed at the first slot.
    nominal: Option<Duration>,
    /// Slots that got less than half their even share (the overhead ate
    /// the rest), and slots held at [`CELL_FLOOR`].
    pub squeezed: usize,
    /// Slots held at the floor: the budget is too short for the matrix.
    pub floored: usize,
}

impl Keeper {
    /// The bookkeeping of `total`, with re-measures (`pairs` only) or
    /// without (the rounds then have it all).
    pub fn new(total: Duration, remeasures: bool) -> Keeper {
        let rounds = if remeasures {
            total.mul_f64(1.0 - REMEASURE_SHARE)
        } else {
            total
        };
        Keeper {
            total,
            rounds,
            overhead_sum: Duration::ZERO,
            overhead_calls: 0,
            nominal: None,
            squeezed: 0,
            floored: 0,
        }
    }

    /// The overhead a measuring call adds beyond its budget, as seen so
    /// far (zero before any).
    pub fn overhead(&self) -> Duration {
        self.overhead_sum
            .checked_div(self.overhead_calls)
            .unwrap_or(Duration::ZERO)
    }

    /// The budget of the next slot, `elapsed` after the rounds began, with
    /// `slots_left` slots to go (this one included), each made of `calls`
    /// measuring calls (1, or 1 + its cells when they also stream alone).
    pub fn slot(&mut self, elapsed: Duration, slots_left: usize, calls: u32) -> Duration {
        let left = self.rounds.saturating_sub(elapsed);
        let even = left / slots_left.max(1) as u32;
        let budget = even.saturating_sub(self.overhead() * calls.max(1));
        let nominal = *self
            .nominal
            .get_or_insert(self.rounds / slots_left.max(1) as u32);
        if budget < nominal / 2 {
            self.squeezed += 1;
        }
        if budget < CELL_FLOOR {
            self.floored += 1;
            return CELL_FLOOR;
        }
        budget
    }

    /// The least the rounds can take, `elapsed` after they began with
    /// `slots_left` slots of `calls` measuring calls to go: each slot at
    /// least [`CELL_FLOOR`] plus the overhead seen per call (a cell's
    /// sweeps cannot do less than their fewest trials), or its even share
    /// when that is more.
    pub fn least_rounds(&self, elapsed: Duration, slots_left: usize, calls: u32) -> Duration {
        let left = self.rounds.saturating_sub(elapsed);
        let even = left / slots_left.max(1) as u32;
        let least_slot = CELL_FLOOR + self.overhead() * calls.max(1);
        elapsed + even.max(least_slot) * slots_left as u32
    }

    /// Whether rounds that take [`Self::least_rounds`] overrun the whole
    /// budget by more than the 1.2 x a budget allows.
    pub fn will_overrun(&self, least_rounds: Duration) -> bool {
        least_rounds > self.total.mul_f64(1.2)
    }

    /// A slot of `calls` measuring calls given `given` in all took `took`.
    pub fn record(&mut self, given: Duration, took: Duration, calls: u32) {
        self.overhead_sum += took.saturating_sub(given);
        self.overhead_calls += calls.max(1);
    }

    /// Keep back enough for `count` cells measured alone after the rounds
    /// (the ring of host-bound rounds, found while they run), each at half
    /// a slot's even share plus the overhead seen, on top of what is kept
    /// already; never more than half the budget.
    pub fn reserve_alone(&mut self, count: usize) {
        let nominal = self.nominal.unwrap_or(self.rounds);
        let want = (nominal / 2 + self.overhead()) * count as u32;
        let kept = self.total.saturating_sub(self.rounds);
        if want > kept {
            self.rounds = self.total.saturating_sub(want.min(self.total / 2));
        }
    }

    /// The budget of each of `count` cells that must all be measured in
    /// what is left of the whole budget `elapsed` after the rounds began
    /// (the ring of a host-bound matrix): never below [`CELL_FLOOR`].
    pub fn share_each(&self, elapsed: Duration, count: usize) -> Duration {
        let left = self.total.saturating_sub(elapsed);
        (left / count.max(1) as u32)
            .saturating_sub(self.overhead())
            .max(CELL_FLOOR)
    }

    /// How many of `wanted` re-measures fit in what is left of the whole
    /// budget `elapsed` after the rounds began, and the budget of each: at
    /// most `cell` (what a cell of the rounds had), at least a quarter of
    /// it (a re-measure much shorter than the cell it checks would be too
    /// noisy to confirm anything), and never below [`CELL_FLOOR`].
    pub fn remeasures(
        &self,
        elapsed: Duration,
        wanted: usize,
        cell: Duration,
    ) -> (usize, Duration) {
        let left = self.total.saturating_sub(elapsed);
        let overhead = self.overhead();
        let least = (cell / 4).max(CELL_FLOOR);
        let mut count = wanted;
        while count > 0 {
            let each = (left / count as u32).saturating_sub(overhead);
            if each >= least {
                return (count, each.min(cell));
            }
            count -= 1;
        }
        (0, Duration::ZERO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Play a whole pairs matrix of `slots` slots and `wanted` re-measures
    /// whose every call takes `overhead(i)` beyond its budget; the wall
    /// time of the whole.
    fn play(
        total: Duration,
        slots: usize,
        wanted: usize,
        overhead: impl Fn(usize) -> Duration,
    ) -> (Duration, Keeper, usize) {
        let mut k = Keeper::new(total, true);
        let mut t = Duration::ZERO;
        let mut first = Duration::MAX;
        for i in 0..slots {
            let b = k.slot(t, slots - i, 1);
            first = first.min(b);
            let took = b + overhead(i);
            k.record(b, took, 1);
            t += took;
        }
        let (count, each) = k.remeasures(t, wanted, first);
        for i in 0..count {
            let took = each + overhead(slots + i);
            k.record(each, took, 1);
            t += took;
        }
        (t, k, count)
    }

    #[test]
    fn the_whole_run_keeps_within_one_fifth_over_its_budget() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        // 4 to 16 nodes (6 to 30 steps), budgets of 2 s to 60 s, overheads
        // of 0 to half a slot's even share, steady or in bursts.
        for (total, slots) in [(s(2), 6), (s(6), 6), (s(12), 10), (s(60), 10), (s(60), 30)] {
            let share = total / slots as u32;
            for oh in [ms(0), share / 10, share / 4, share / 2] {
                let steady = play(total, slots, slots / 2, |_| oh);
                let bursty = play(total, slots, slots / 2, |i| {
                    if i % 3 == 0 {
                        oh * 2
                    } else {
                        Duration::ZERO
                    }
                });
                // A modest steady overhead never drives a cell to the floor.
                if oh <= share / 4 {
                    assert_eq!(steady.1.floored, 0, "{total:?} {slots} {oh:?}");
                }
                for (t, _, count) in [steady, bursty] {
                    assert!(
                        t <= total.mul_f64(1.2),
                        "{total:?} over {slots} slots, overhead {oh:?}: took {t:?}"
                    );
                    // Without overhead every re-measure fits.
                    if oh.is_zero() {
                        assert_eq!(count, slots / 2, "{total:?} {slots}");
                    }
                }
            }
        }
    }

    #[test]
    fn host_bound_rounds_leave_room_for_the_ring_alone() {
        let ms = Duration::from_millis;
        // 6 nodes, 10 slots of 8 s, 300 ms overhead a call; host-bound
        // found after the second slot: the ring of 6 then fits.
        let mut k = Keeper::new(ms(8000), true);
        let mut t = Duration::ZERO;
        for i in 0..10 {
            if i == 2 {
                k.reserve_alone(6);
            }
            let b = k.slot(t, 10 - i, 1);
            k.record(b, b + ms(300), 1);
            t += b + ms(300);
        }
        let each = k.share_each(t, 6);
        t += (each + ms(300)) * 6;
        assert!(t <= ms(8000).mul_f64(1.2), "{t:?}");
        assert!(each > CELL_FLOOR, "{each:?}");
    }

    #[test]
    fn a_budget_too_short_for_the_matrix_is_floored_and_counted() {
        let ms = Duration::from_millis;
        // 30 slots of 100 ms overhead each in a 1 s budget: impossible.
        let (t, k, count) = play(ms(1000), 30, 10, |_| ms(100));
        assert!(k.floored > 0 && k.squeezed > 0, "{k:?}");
        assert_eq!(count, 0, "no re-measure fits once the budget is spent");
        assert!(t > ms(1200));
    }

    #[test]
    fn an_overrun_is_foreseen_from_the_first_slot() {
        let ms = Duration::from_millis;
        // The busy matrix of issue 43: 14 steps in 20 s, the first taking
        // 1.8 s beyond its 1.1 s share: 13 more of at least 1.83 s.
        let mut k = Keeper::new(ms(20_000), true);
        let first = k.slot(ms(0), 14, 1);
        k.record(first, first + ms(1800), 1);
        let least = k.least_rounds(first + ms(1800), 13, 1);
        assert!(k.will_overrun(least), "{least:?}");
        assert!(least >= first + ms(1800 + 13 * 1830), "{least:?}");
        // A quiet one: 100 ms beyond; 14 slots fit.
        let mut k = Keeper::new(ms(20_000), true);
        let first = k.slot(ms(0), 14, 1);
        k.record(first, first + ms(100), 1);
        let least = k.least_rounds(first + ms(100), 13, 1);
        assert!(!k.will_overrun(least), "{least:?}");
    }

    #[test]
    fn re_measures_are_bounded_by_the_cells_budget_and_a_quarter_of_it() {
        let s = Duration::from_secs;
        let k = Keeper::new(s(10), true);
        // 2 s left (the reserve), cells of 1 s: two at 1 s each.
        assert_eq!(k.remeasures(s(8), 2, s(1)), (2, s(1)));
        // Four want 0.5 s each: at least a quarter of the cell, so fine.
        assert_eq!(k.remeasures(s(8), 4, s(1)), (4, Duration::from_millis(500)));
        // Ten would get 0.2 s: eight fit at a quarter (0.25 s).
        assert_eq!(k.remeasures(s(8), 10, s(1)).0, 8);
        // Nothing left.
        assert_eq!(k.remeasures(s(11), 3, s(1)).0, 0);
    }
}

//! The IS class table of NPB 3.4 (spec: "IS: integer sort"): sizes, the
//! test keys of the partial verification and how their expected ranks
//! move from iteration to iteration.

use crate::npb::Class;

/// Timed rankings (NPB's `MAX_ITERATIONS`).
pub const ITERATIONS: usize = 10;

/// Test keys checked at every iteration (NPB's `TEST_ARRAY_SIZE`).
pub const TEST_KEYS: usize = 5;

/// What distinguishes one IS class from another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IsParams {
    /// The class.
    pub class: Class,
    /// log2 of the number of keys.
    pub keys_log2: u32,
    /// log2 of the largest key value (keys lie in `[0, 2^max_key_log2)`).
    pub max_key_log2: u32,
    /// log2 of the number of buckets.
    pub buckets_log2: u32,
    /// Global indices of the test keys.
    pub test_index: [usize; TEST_KEYS],
    /// NPB's ranks of the test keys, before the per-iteration shift.
    pub test_rank: [i64; TEST_KEYS],
}

impl IsParams {
    /// The parameters of `class`.
    pub fn of(class: Class) -> Self {
        let (keys_log2, max_key_log2, buckets_log2, test_index, test_rank) = match class {
            Class::S => (
                16,
                11,
                9,
                [48427, 17148, 23627, 62548, 4431],
                [0, 18, 346, 64917, 65463],
            ),
            Class::W => (
                20,
                16,
                10,
                [357773, 934767, 875723, 898999, 404505],
                [1249, 11698, 1039987, 1043896, 1048018],
            ),
            Class::A => (
                23,
                19,
                10,
                [2112377, 662041, 5336171, 3642833, 4250760],
                [104, 17523, 123928, 8288932, 8388264],
            ),
            Class::B => (
                25,
                21,
                10,
                [41869, 812306, 5102857, 18232239, 26860214],
                [33422937, 10244, 59149, 33135281, 99],
            ),
            Class::C => (
                27,
                23,
                10,
                [44172927, 72999161, 74326391, 129606274, 21736814],
                [61147, 882988, 266290, 133997595, 133525895],
            ),
        };
        IsParams {
            class,
            keys_log2,
            max_key_log2,
            buckets_log2,
            test_index,
            test_rank,
        }
    }

    /// Number of keys.
    pub fn keys(&self) -> usize {
        1 << self.keys_log2
    }

    /// One more than the largest key value (NPB's `MAX_KEY`).
    pub fn max_key(&self) -> usize {
        1 << self.max_key_log2
    }

    /// Number of buckets.
    pub fn buckets(&self) -> usize {
        1 << self.buckets_log2
    }

    /// Right shift from a key to its bucket.
    pub fn bucket_shift(&self) -> u32 {
        self.max_key_log2 - self.buckets_log2
    }

    /// NPB's operation count: keys ranked over the timed iterations.
    pub fn operation_count(&self) -> f64 {
        (ITERATIONS * self.keys()) as f64
    }

    /// The problem in a few words.
    pub fn describe(&self) -> String {
        format!(
            "2^{} keys below 2^{}, {ITERATIONS} iterations",
            self.keys_log2, self.max_key_log2
        )
    }

    /// The rank test key `i` must have at iteration `it` (1-based): NPB's
    /// table entry shifted by the iteration, in a way that differs by class
    /// and position.
    pub fn expected_rank(&self, i: usize, it: usize) -> i64 {
        let (r, it) = (self.test_rank[i], it as i64);
        match self.class {
            Class::S | Class::C if i <= 2 => r + it,
            Class::S | Class::C => r - it,
            Class::W if i <= 1 => r + (it - 2),
            Class::W => r - it,
            Class::A if i <= 2 => r + (it - 1),
            Class::A => r - (it - 1),
            Class::B if matches!(i, 1 | 2 | 4) => r + it,
            Class::B => r - it,
        }
    }

    /// The key at global index `index` during iteration `it`, given its
    /// generated value: iteration `j` sets key `j` to `j` and key `j + 10`
    /// to `max_key - j`, and those keys keep the last value set.
    pub fn key_at(&self, index: usize, generated: u32, it: usize) -> u32 {
        (1..=it)
            .rev()
            .find_map(|j| {
                if index == j {
                    Some(j as u32)
                } else if index == j + ITERATIONS {
                    Some((self.max_key() - j) as u32)
                } else {
                    None
                }
            })
            .unwrap_or(generated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_ranks_follow_the_per_class_shifts() {
        let s = IsParams::of(Class::S);
        assert_eq!(s.expected_rank(0, 1), 1);
        assert_eq!(s.expected_rank(4, 10), 65463 - 10);
        let w = IsParams::of(Class::W);
        assert_eq!(w.expected_rank(1, 1), 11698 - 1);
        assert_eq!(w.expected_rank(2, 3), 1039987 - 3);
        let a = IsParams::of(Class::A);
        assert_eq!(a.expected_rank(0, 1), 104);
        assert_eq!(a.expected_rank(3, 2), 8288932 - 1);
        let b = IsParams::of(Class::B);
        assert_eq!(b.expected_rank(4, 2), 101);
        assert_eq!(b.expected_rank(0, 2), 33422935);
    }

    #[test]
    fn modified_keys_keep_their_last_value() {
        let s = IsParams::of(Class::S);
        assert_eq!(s.key_at(3, 77, 2), 77);
        assert_eq!(s.key_at(3, 77, 3), 3);
        assert_eq!(s.key_at(3, 77, 9), 3);
        assert_eq!(s.key_at(13, 77, 3), 2048 - 3);
        assert_eq!(s.key_at(48427, 77, 10), 77);
    }

    #[test]
    fn sizes_match_the_spec() {
        let c = IsParams::of(Class::C);
        assert_eq!(
            (c.keys(), c.max_key(), c.buckets()),
            (1 << 27, 1 << 23, 1024)
        );
        assert_eq!(IsParams::of(Class::S).operation_count(), 655_360.0);
    }
}

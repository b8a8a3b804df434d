//! Measuring one point: the timing loops and the repetition policy.
//!
//! Above the transports (the loops drive an [`crate::transport::Endpoint`])
//! and below the peer and the sweep engine, which both run these loops.
//!
//! * [`loops`]: the hot loops of both ends. Nothing in them allocates,
//!   prints, logs or locks; the only calls are the endpoint's and the clock;
//! * [`policy`]: the repetition policy (calibration, warm-up, trials until
//!   the median's confidence interval is narrow enough or the point's share
//!   of the budget is spent), written against a [`policy::BlockRunner`] so
//!   it can be tested exactly with a mock;
//! * [`timer`]: the cost of reading the clock, measured and subtracted.

pub mod checked;
pub mod loops;
pub mod policy;
pub mod timer;

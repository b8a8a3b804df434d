//! Derived figures from results (latency, peak, n_1/2, saturation, switch-overs, drop-outs).

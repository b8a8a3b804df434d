//! NAS Parallel Benchmark kernels written for wulf from the NPB specification.

"""Benchmarks: ``radixkv bench ops`` (the five operations of ``../shared/BENCH_WORKLOAD.md``),
alone or side by side with SGLang's tree cores (:mod:`radixkv.bench.peers`)."""

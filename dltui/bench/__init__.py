"""Benchmarks: DeepBench kernels and CNN training, run in a worker process, never in the agent."""

"""DeepBench kernels, timed through the frameworks themselves: one module per kind."""

"""What-if: the step time, images/s and scaling efficiency of data-parallel training on
layouts of servers × GPUs that nobody has measured, composed from what was measured.

Pure, no I/O. `links` fits collective times against message size per link level, `workload`
turns a measured step profile (or a described server) into gradients and when each is ready,
`model` composes them (buckets, hierarchical all-reduce, overlap with backward), `described`
reads a hypothetical server's description. Every prediction names what it came from.
"""

"""The lab: benchmarks, reliability scenarios and experiment runners.

They measure the product and may import any of it; no product module imports them. The CLI's
`bench` and `experiment` commands reach them lazily, inside the command's body.
"""

"""The only place that knows kernel structure: the plan, fields, kernels and their launches."""

"""One module per check target; each registers itself in ``edge_tool.check.registry``."""

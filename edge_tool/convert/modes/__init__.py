"""One module per TFLite mode; each registers itself in edge_tool.convert.registry."""

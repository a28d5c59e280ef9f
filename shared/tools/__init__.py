"""The data tools as a model calls them: the tool bridge and the tools' output contracts."""

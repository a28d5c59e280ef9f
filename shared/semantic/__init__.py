"""The semantic model format and its metric expression grammar, read alike by the Resource Gateway and by the
`tessera semantic` commands, so neither restates the other's limits."""

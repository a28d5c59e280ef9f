"""Data handled safely: bounded JSON, schemas, strict YAML, the analysis draft, databases and caches."""

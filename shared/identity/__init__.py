"""Who is who: certificates and SPIFFE ids, principals, signed tokens, actor assertions, signed decisions."""

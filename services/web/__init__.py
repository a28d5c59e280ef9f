"""Browser gateway: the person's session and transport glue. For now a status page."""

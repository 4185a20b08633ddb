"""coil's OAST reference deployment: authoritative DNS and HTTP callback
listeners whose answers each tenant's Python handler decides, run sandboxed
by coil. See docs/oast.md."""

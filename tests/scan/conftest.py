"""The corpus holds other projects' code: pytest never collects it."""

collect_ignore_glob = ["corpus/*"]

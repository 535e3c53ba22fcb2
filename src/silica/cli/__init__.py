"""Command-line interface: thin wrappers that call the library and print what it returns."""

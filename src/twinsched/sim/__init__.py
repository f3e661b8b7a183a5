"""The virtual training environment: clock, event engine, fill-up and replay runs."""

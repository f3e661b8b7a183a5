"""Pure metric functions over cluster state and run records."""

"""The bounded plain-HTTP probe port both long-running processes serve (standard library only)."""

"""CLI command modules (light at import time; heavy work imported inside each command)."""

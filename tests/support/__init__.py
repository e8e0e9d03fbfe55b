"""Shared fakes and helpers for every app's tests: test upstreams, configs, ports."""

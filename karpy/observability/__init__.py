"""What karpy tells its operators about itself: Prometheus metrics, health and readiness
probes, and on-demand CPU and memory profiles (``docs/observability.md``)."""

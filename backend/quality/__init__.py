"""Quality checks one floor above the facade: evaluation on question sets, the self-test, the
confidence's calibration, and every benchmark (bench-*). They call ``backend.service.DocLens`` only."""

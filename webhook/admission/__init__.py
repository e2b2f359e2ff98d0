"""The AdmissionReview edge of the core: wire model, answers and pure handlers (no Flask)."""

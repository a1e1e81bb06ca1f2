"""HTTP only: each router translates requests to service calls and back."""

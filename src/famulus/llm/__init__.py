"""Model providers, credentials, custom models and model resolution."""

"""Adversarial tests of the sandbox layers: attack scripts that must not succeed."""

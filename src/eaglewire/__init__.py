"""eaglewire: EAGLE-3 speculative decoding toolkit.

First promise: a drafter is fed, at serving time, exactly the target hidden states (taps) it was trained on, and
anyone can prove it without a serving engine. See DESIGN notes for the vocabulary (tap, wiring, convention,
format, provenance, accept length).
"""

__version__ = "0.1.0"

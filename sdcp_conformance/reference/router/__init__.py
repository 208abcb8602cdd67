"""The reference router (draft §6.1, §6.5.2, §6.6, §6.9; P1-RTR-1..6)."""

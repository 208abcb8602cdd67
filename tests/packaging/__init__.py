"""The package as vendors install it: the wheel's contents, its extras, the base install without torch."""

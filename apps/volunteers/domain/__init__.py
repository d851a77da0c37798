"""Pure rules of the volunteer side (no Django): team founder transfer."""

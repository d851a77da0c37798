"""Pure host logic (no Django): homogeneous redundancy classes."""

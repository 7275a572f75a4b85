"""Cost model of convolutions on the cube (img2col + mad)."""

"""Benchmarks and their harness: tools for measuring Cobblestone, never imported by the product apps."""

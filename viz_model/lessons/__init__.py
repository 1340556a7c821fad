"""What each page proves, one module per lesson: torch/numpy only, measurements in, small results out."""

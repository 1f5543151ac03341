"""The tandem process: its settings (`TandemConfig`), the coins, the strategies, boundaries, who writes each token, and how the junior changes."""

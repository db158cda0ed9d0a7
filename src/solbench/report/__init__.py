"""Tables, HTML, plots and leaderboards from stored results."""

"""The live dashboard. Only this package (and the screens others add here) imports Textual."""

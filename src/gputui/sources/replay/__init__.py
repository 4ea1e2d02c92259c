"""The replay source: a recording's polls, played back as a live source would poll them."""

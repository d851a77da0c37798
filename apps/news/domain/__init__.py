"""News without Django: the news markup and the personal feed's key."""

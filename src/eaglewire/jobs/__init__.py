"""Jobs: each takes files and options and returns a typed report; none prints."""

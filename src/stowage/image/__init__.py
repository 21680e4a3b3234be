"""The Image service: an Image API v2 subset holding image records, never image bytes."""

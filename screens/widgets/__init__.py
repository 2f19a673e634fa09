"""Small renderables several screens share."""

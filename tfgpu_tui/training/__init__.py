"""How is my training going? Follow a training log, parse Keras progress, explain known errors."""

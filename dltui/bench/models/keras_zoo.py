"""The four CNNs in TensorFlow: ResNet-50 and VGG-16 from keras.applications (no downloaded
weights), GoogLeNet (Inception v1) and AlexNet as tf_cnn_benchmarks defines them.

tf_cnn_benchmarks' convolutions carry a bias and a ReLU and no batch norm for these two; its
AlexNet takes 227-pixel images (224 + 3, for its unpadded first convolution), its GoogLeNet ends
in a 7×7 average pool (global pooling here, which is the same at 224 and lets tests use small
images).
"""

from __future__ import annotations

from typing import Any

# (1×1, 3×3 reduce, 3×3, 5×5 reduce, 5×5, pool projection), as in the paper and tf_cnn_benchmarks.
_INCEPTION = {
    "3a": (64, 96, 128, 16, 32, 32), "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64), "4b": (160, 112, 224, 24, 64, 64),
    "4c": (128, 128, 256, 24, 64, 64), "4d": (112, 144, 288, 32, 64, 64),
    "4e": (256, 160, 320, 32, 128, 128),
    "5a": (256, 160, 320, 32, 128, 128), "5b": (384, 192, 384, 48, 128, 128),
}  # fmt: skip


def image_size(name: str, size: int) -> int:
    """The image size the network is fed: tf_cnn_benchmarks gives AlexNet 3 pixels more."""
    return size + 3 if name == "alexnet" else size


def build(name: str, classes: int, size: int, channels_last: bool = True) -> Any:
    """A freshly initialised Keras model taking `size`-pixel images, logits out (float32)."""
    import tensorflow as tf

    keras = tf.keras
    data_format = "channels_last" if channels_last else "channels_first"
    shape = (size, size, 3) if channels_last else (3, size, size)
    if name in ("resnet50", "vgg16"):
        application = (keras.applications.ResNet50 if name == "resnet50"
                       else keras.applications.VGG16)  # fmt: skip
        previous = keras.backend.image_data_format()
        keras.backend.set_image_data_format(data_format)
        try:
            core = application(weights=None, input_shape=shape, classes=classes,
                               classifier_activation=None)  # fmt: skip
        finally:
            keras.backend.set_image_data_format(previous)
        # Logits in float32 whatever the mixed-precision policy: a stable softmax.
        return keras.Model(core.input, keras.layers.Activation("linear", dtype="float32")(
            core.output))  # fmt: skip
    layers = keras.layers
    inputs = keras.Input(shape)

    def conv(x: Any, filters: int, kernel: int, stride: int = 1, padding: str = "same") -> Any:
        return layers.Conv2D(filters, kernel, stride, padding, data_format=data_format,
                             activation="relu")(x)  # fmt: skip

    def max_pool(x: Any, size: int = 3, stride: int = 2, padding: str = "valid") -> Any:
        return layers.MaxPool2D(size, stride, padding, data_format=data_format)(x)

    if name == "alexnet":
        x = conv(inputs, 64, 11, 4, "valid")
        x = max_pool(x)
        x = max_pool(conv(x, 192, 5))
        x = conv(conv(conv(x, 384, 3), 384, 3), 256, 3)
        x = layers.Flatten(data_format=data_format)(max_pool(x))
        for _ in range(2):
            x = layers.Dropout(0.5)(layers.Dense(4096, activation="relu")(x))
    elif name == "googlenet":
        axis = -1 if channels_last else 1
        x = conv(inputs, 64, 7, 2)
        x = max_pool(x, padding="same")
        x = max_pool(conv(conv(x, 64, 1), 192, 3), padding="same")
        for block, (one, reduce3, three, reduce5, five, project) in _INCEPTION.items():
            if block in ("4a", "5a"):
                x = max_pool(x, padding="same")
            x = layers.Concatenate(axis=axis)([
                conv(x, one, 1),
                conv(conv(x, reduce3, 1), three, 3),
                conv(conv(x, reduce5, 1), five, 5),
                conv(max_pool(x, 3, 1, "same"), project, 1),
            ])  # fmt: skip
        x = layers.GlobalAveragePooling2D(data_format=data_format)(x)
    else:
        raise ValueError(f"unknown model {name!r}")
    outputs = layers.Dense(classes, dtype="float32")(x)
    return keras.Model(inputs, outputs, name=name)

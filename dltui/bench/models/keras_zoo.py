"""The four CNNs in TensorFlow: ResNet-50 and VGG-16 from keras.applications (no downloaded
weights), GoogLeNet (Inception v1) and AlexNet as tf_cnn_benchmarks defines them; and the small
CIFAR ResNet-20 as torch_zoo builds it.

tf_cnn_benchmarks' convolutions carry a bias and a ReLU and no batch norm for these two; its
AlexNet takes 227-pixel images (224 + 3, for its unpadded first convolution), its GoogLeNet ends
in a 7×7 average pool (global pooling here, which is the same at 224 and lets tests use small
images).
"""

from __future__ import annotations

from typing import Any

from dltui.bench.models import INCEPTION_V1


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
    elif name == "resnet20":
        x = _resnet20(keras, inputs, data_format)
    elif name == "googlenet":
        axis = -1 if channels_last else 1
        x = conv(inputs, 64, 7, 2)
        x = max_pool(x, padding="same")
        x = max_pool(conv(conv(x, 64, 1), 192, 3), padding="same")
        for block, (one, reduce3, three, reduce5, five, project) in INCEPTION_V1.items():
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


def _resnet20(keras: Any, inputs: Any, data_format: str) -> Any:
    """He et al.'s CIFAR ResNet-20, as torch_zoo builds it: convolutions without bias, batch
    norm, a 1×1 projection where the shape changes."""
    layers = keras.layers
    axis = -1 if data_format == "channels_last" else 1

    def conv_bn(x: Any, filters: int, kernel: int, stride: int = 1, relu: bool = True) -> Any:
        x = layers.Conv2D(filters, kernel, stride, "same", data_format=data_format,
                          use_bias=False)(x)  # fmt: skip
        x = layers.BatchNormalization(axis=axis, epsilon=1e-5)(x)
        return layers.ReLU()(x) if relu else x

    x = conv_bn(inputs, 16, 3)
    cin = 16
    for width, stride in ((16, 1), (32, 2), (64, 2)):
        for block in range(3):
            step = stride if block == 0 else 1
            shortcut = x if step == 1 and cin == width else conv_bn(x, width, 1, step, False)
            body = conv_bn(conv_bn(x, width, 3, step), width, 3, relu=False)
            x = layers.ReLU()(layers.Add()([body, shortcut]))
            cin = width
    return layers.GlobalAveragePooling2D(data_format=data_format)(x)

"""The models of docs/MODELS.md in PyTorch, verbatim, for train_peer.py (the parameter counts are asserted), and
torchvision's zoo models as scripts/zoo_table.py builds them for export (the engine trains their ONNX files)."""

import os
import sys

EXPECTED_PARAMETERS = {"vgg6": 3249994, "resnet18": 11173962, "mnist_cnn": 1199882, "cnn3": 2474506}


def define_models(torch):
    nn = torch.nn
    F = torch.nn.functional

    class VGG6(nn.Module):
        def __init__(self, in_channels=3, num_classes=10):
            super().__init__()
            layers, c = [], in_channels
            for width in (64, 128, 256):
                for _ in range(2):
                    layers += [nn.Conv2d(c, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(inplace=True)]
                    c = width
                layers.append(nn.MaxPool2d(2))
            self.features = nn.Sequential(*layers)
            self.flatten = nn.Flatten()
            self.classifier = nn.Sequential(
                nn.Linear(4096, 512), nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(512, num_classes))

        def forward(self, x):
            return self.classifier(self.flatten(self.features(x)))

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, in_planes, planes, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.shortcut = nn.Sequential()
            if stride != 1 or in_planes != planes:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(planes))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out = out + self.shortcut(x)
            return F.relu(out)

    class ResNet(nn.Module):
        def __init__(self, block, num_blocks, in_channels=3, num_classes=10):
            super().__init__()
            self.in_planes = 64
            self.conv1 = nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.layer1 = self._make_layer(block, 64, num_blocks[0], stride=1)
            self.layer2 = self._make_layer(block, 128, num_blocks[1], stride=2)
            self.layer3 = self._make_layer(block, 256, num_blocks[2], stride=2)
            self.layer4 = self._make_layer(block, 512, num_blocks[3], stride=2)
            self.linear = nn.Linear(512 * block.expansion, num_classes)

        def _make_layer(self, block, planes, num_blocks, stride):
            layers = []
            for s in [stride] + [1] * (num_blocks - 1):
                layers.append(block(self.in_planes, planes, s))
                self.in_planes = planes * block.expansion
            return nn.Sequential(*layers)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
            out = F.adaptive_avg_pool2d(out, 1).flatten(1)
            return self.linear(out)

    def resnet18():
        return ResNet(BasicBlock, [2, 2, 2, 2])

    class CNN3(nn.Module):
        def __init__(self, in_channels=3, num_classes=10):
            super().__init__()
            layers, c = [], in_channels
            for width in (64, 128, 256):
                layers += [nn.Conv2d(c, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                           nn.MaxPool2d(2)]
                c = width
            self.features = nn.Sequential(*layers)
            self.flatten = nn.Flatten()
            self.classifier = nn.Sequential(
                nn.Linear(4096, 512), nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(512, num_classes))

        def forward(self, x):
            return self.classifier(self.flatten(self.features(x)))

    class MnistCNN(nn.Module):  # PyTorch examples/mnist Net; logits (CrossEntropyLoss = log_softmax + NLL)
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = F.relu(self.conv2(F.relu(self.conv1(x))))
            x = self.dropout1(F.max_pool2d(x, 2)).flatten(1)
            return self.fc2(self.dropout2(F.relu(self.fc1(x))))

    return {"vgg6": VGG6, "resnet18": resnet18, "cnn3": CNN3, "mnist_cnn": MnistCNN}


def zoo_names():
    """torchvision's classification CNNs that the engine imports from ONNX at 32x32 (scripts/zoo_table.py)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
    import zoo_table
    return [m for m in zoo_table.MODELS if m not in zoo_table.SIZES]


def build_model(torch, name):
    if name not in EXPECTED_PARAMETERS:  # a torchvision model, built as scripts/zoo_table.py exports it
        import zoo_table
        return zoo_table.build(name)
    model = define_models(torch)[name]()
    count = sum(p.numel() for p in model.parameters())
    if count != EXPECTED_PARAMETERS[name]:
        sys.exit(f"train_peer.py: {name} has {count} parameters, docs/MODELS.md says {EXPECTED_PARAMETERS[name]}")
    return model

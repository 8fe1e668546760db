from nnrnn.kernels.host import cpu_fields, describe_cpu

XEON = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz

processor\t: 1
model name\t: a second core, not read
"""


def test_a_speed_figure_names_the_cpu_its_family_and_model():
    text = describe_cpu(XEON)
    assert text.startswith("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz (GenuineIntel family 6 model 143), ")
    assert text.endswith(" cores")
    assert cpu_fields(XEON)["model name"].startswith("Intel")  # the first processor's, not the last's


def test_a_machine_without_cpuinfo_is_still_named():
    assert describe_cpu("").endswith(" cores")
    assert "family" not in describe_cpu("")

# Copyright 2026 kron_dynamics developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""The kernels' argument types, and their compiled entry points (imports numba)."""

from importlib import import_module

from numba import types as nt

_I = nt.int64[:, ::1]
_R = nt.float64[:, ::1]
_V = nt.float64[:]
_A2 = nt.float64[:, :]
_A3 = nt.float64[:, :, :]
_O1 = nt.float64[::1]
_O2 = nt.float64[:, ::1]
_O3 = nt.float64[:, :, ::1]
_O4 = nt.float64[:, :, :, ::1]
_OK = nt.boolean[::1]     # a batch's per-row success flags
_K = nt.int64        # a row of the site array (a link), or a frame code (layout.WORLD, ...)
# entry point -> (kernel module, argument types)
SIGNATURES = {
    'all_finite': ('algebra', (_V,)),
    'rnea': ('rnea', (_I, _R, _V, _V, _V, nt.int64, _A2, _O1)),
    'rnea_batch': ('rnea', (_I, _R, _A2, _A2, _A2, nt.int64, _O2)),
    'gravity': ('rnea', (_I, _R, _V, _O1)),
    'regressor': ('regressor', (_I, _R, _V, _V, _V, _O2)),
    'regressor_batch': ('regressor', (_I, _R, _A2, _A2, _A2, _O3)),
    'crba': ('crba', (_I, _R, _V, _O2)),
    'crba_batch': ('crba', (_I, _R, _A2, _O3)),
    'centroidal_momentum_matrix': ('crba', (_I, _R, _V, _O2)),
    'centroidal_momentum_matrix_batch': ('crba', (_I, _R, _A2, _O3)),
    'coriolis_star': ('coriolis_star', (_I, _R, _V, _O2)),
    'coriolis_star_batch': ('coriolis_star', (_I, _R, _A2, _O3)),
    'coriolis_matrix': ('coriolis_star', (_I, _R, _V, _V, _O2)),
    'coriolis_matrix_batch': ('coriolis_star', (_I, _R, _A2, _A2, _O3)),
    'forward_dynamics': ('forward_dynamics', (_I, _R, _V, _V, _V, _V, _O1)),
    'forward_dynamics_batch': ('forward_dynamics', (_I, _R, _A2, _A2, _A2, _V, _O2)),
    'rk4': ('forward_dynamics', (_I, _R, _V, _V, _V, _V, nt.float64, nt.int64, _O2)),
    'rk4_batch': ('forward_dynamics', (_I, _R, _A2, _A2, _A2, _V, nt.float64, nt.int64, _O3)),
    'link_pose': ('kinematics', (_I, _R, _R, _K, _V, _O2)),
    'link_pose_batch': ('kinematics', (_I, _R, _R, _K, _A2, _O3)),
    'link_poses': ('kinematics', (_I, _R, _R, _V, _O3)),
    'link_poses_batch': ('kinematics', (_I, _R, _R, _A2, _O4)),
    'jacobian': ('jacobians', (_I, _R, _R, _K, _V, _V, _K, _O2)),
    'jacobian_batch': ('jacobians', (_I, _R, _R, _K, _V, _A2, _K, _O3)),
    'jacobian_derivative': ('jacobians', (_I, _R, _R, _K, _V, _V, _V, _K, _O2)),
    'jacobian_derivative_batch': ('jacobians', (_I, _R, _R, _K, _V, _A2, _A2, _K, _O3)),
    'acceleration': ('jacobians', (_I, _R, _R, _K, _V, _V, _V, _V, _K, _O1)),
    'acceleration_batch': ('jacobians', (_I, _R, _R, _K, _V, _A2, _A2, _A2, _K, _O2)),
    'jacobians': ('jacobians', (_I, _R, _R, _K, _V, _O3)),
    'hessian': ('jacobians', (_I, _R, _R, _K, _V, _V, _K, _O2)),
    'hessians': ('jacobians', (_I, _R, _R, _K, _V, _V, _O3)),
    'hessian_batch': ('jacobians', (_I, _R, _R, _K, _V, _A2, _K, _O3)),
    'chain_acceleration': ('floating_base', (_V, _V, _O1)),
    'contact_terms': ('floating_base', (_I, _R, _R, _R, _V, _V, _V, nt.int64[::1], _R,
                                        nt.int64[::1], nt.int64[::1], _O2, _O1)),
    'solve_columns': ('forward_dynamics', (_R, _R, nt.float64, _O2)),
    'task_inertia': ('forward_dynamics', (_R, _R, nt.float64, nt.float64, _O2)),
    'task_inertia_batch': ('forward_dynamics', (_O3, _O3, nt.float64, nt.float64, _O3, _OK)),
    'floating_rnea': ('floating_base', (_I, _R, _R, _V, _V, _V, nt.int64, nt.float64, _O1)),
    'floating_crba': ('floating_base', (_I, _R, _V, nt.float64, _O2)),
    'floating_rnea_batch': ('floating_base', (_I, _R, _R, _A2, _A2, _A2, nt.int64, nt.float64,
                                              _O2)),
    'floating_crba_batch': ('floating_base', (_I, _R, _A2, nt.float64, _O3)),
    'floating_forward_dynamics_batch': ('floating_base', (_I, _R, _R, _A2, _A2, _A2,
                                                          nt.float64, _O2)),
    'floating_constrained_forward_dynamics': ('floating_base', (
        _I, _R, _R, _R, _V, _V, _V, nt.float64, nt.int64[::1], _R, nt.int64[::1],
        nt.int64[::1], _O1, _O1)),
    'moving_constrained_forward_dynamics': ('floating_base', (
        _I, _R, _R, _R, nt.boolean, _R, _V, _V, _V, _V, nt.float64, nt.int64[::1], _R,
        nt.int64[::1], nt.int64[::1], _O1, _O1)),
    'fixed_contact_terms': ('floating_base', (
        _I, _R, _R, _R, _V, _V, nt.int64[::1], _R, nt.int64[::1], nt.int64[::1], _O2, _O1)),
    'fixed_constrained_forward_dynamics': ('floating_base', (
        _I, _R, _R, _R, _V, _V, _V, _V, nt.int64[::1], _R, nt.int64[::1], nt.int64[::1], _O1,
        _O1)),
    'floating_constrained_forward_dynamics_batch': ('floating_base', (
        _I, _R, _R, _R, _A2, _A2, _A2, nt.float64, nt.int64[::1], _R, nt.int64[::1],
        nt.int64[::1], _O2, _O2, _OK)),
    'moving_constrained_forward_dynamics_batch': ('floating_base', (
        _I, _R, _R, _R, nt.boolean, _R, _V, _A2, _A2, _A2, nt.float64, nt.int64[::1], _R,
        nt.int64[::1], nt.int64[::1], _O2, _O2, _OK)),
    'fixed_constrained_forward_dynamics_batch': ('floating_base', (
        _I, _R, _R, _R, _V, _A2, _A2, _A2, nt.int64[::1], _R, nt.int64[::1], nt.int64[::1],
        _O2, _O2, _OK)),
    'floating_jacobian': ('floating_base', (_I, _R, _R, _R, _V, nt.float64, _K, _V, _K, _O2)),
    'floating_forward_dynamics': ('floating_base', (_I, _R, _R, _V, _V, _V, nt.float64, _O1)),
    'moving_rnea': ('floating_base', (_I, _R, _R, nt.boolean, _R, _V, _V, _V, _V, nt.int64,
                                      nt.float64, _O1)),
    'moving_rnea_batch': ('floating_base', (_I, _R, _R, nt.boolean, _R, _V, _A2, _A2, _A2,
                                            nt.int64, nt.float64, _O2)),
    'moving_crba': ('floating_base', (_I, _R, nt.boolean, _R, _V, _V, nt.float64, _O2)),
    'moving_crba_batch': ('floating_base', (_I, _R, nt.boolean, _R, _V, _A2, nt.float64, _O3)),
    'moving_forward_dynamics': ('floating_base', (_I, _R, _R, nt.boolean, _R, _V, _V, _V, _V,
                                                  nt.float64, _O1)),
    'moving_forward_dynamics_batch': ('floating_base', (_I, _R, _R, nt.boolean, _R, _V, _A2,
                                                        _A2, _A2, nt.float64, _O2)),
    'moving_jacobian': ('floating_base', (_I, _R, _R, _R, nt.boolean, _R, _V, nt.float64, _K,
                                          _V, _K, _O2)),
    'moving_jacobian_derivative': ('floating_base', (_I, _R, _R, _R, nt.boolean, _R, _V, _V,
                                                     nt.float64, _K, _V, _K, _O2)),
    'moving_coriolis_matrix': ('floating_base', (_I, _R, nt.boolean, _R, _V, _V, nt.float64,
                                                 _O2)),
    'moving_link_pose': ('floating_base', (_I, _R, _R, _R, nt.boolean, _R, _V, nt.float64, _K,
                                           _O2)),
    'moving_link_poses': ('floating_base', (_I, _R, _R, _R, nt.boolean, _R, _V, nt.float64,
                                            _O3)),
    'moving_center_of_mass': ('floating_base', (_I, _R, _R, nt.boolean, _R, _V, nt.float64,
                                                _O1)),
    'moving_center_of_mass_jacobian': ('floating_base', (_I, _R, _R, nt.boolean, _R, _V,
                                                         nt.float64, _O2)),
    'moving_centroidal_momentum_matrix': ('floating_base', (_I, _R, _R, nt.boolean, _R, _V,
                                                            nt.float64, _O2)),
    'moving_coriolis_star': ('floating_base', (_I, _R, nt.boolean, _R, _V, nt.float64, _O2)),
    'moving_difference': ('floating_base', (nt.boolean, _V, _V, nt.float64, _O1)),
    'moving_acceleration': ('floating_base', (_I, _R, _R, _R, nt.boolean, _R, _V, _V, _V,
                                              nt.float64, _K, _V, _K, _O1)),
    'moving_hessian': ('floating_base', (_I, _R, _R, _R, nt.boolean, _R, _V, nt.float64, _K,
                                         _V, _K, _O2)),
    'moving_integrate': ('floating_base', (nt.boolean, _V, _V, nt.float64, nt.float64, _O1)),
    'moving_simulate': ('floating_base', (_I, _R, _R, nt.boolean, _R, _V, nt.boolean, _V, _V,
                                          _V, _V, nt.float64, nt.int64, nt.float64, _O1, _O1)),
    'moving_simulate_batch': ('floating_base', (_I, _R, _R, nt.boolean, _R, _V, nt.boolean,
                                                _A2, _A2, _A2, _V, nt.float64, nt.int64,
                                                nt.float64, _O2, _O2)),
    # the batch twins of the moving base's kinematics (the states and out gain a row axis)
    'floating_jacobian_batch': ('floating_base', (_I, _R, _R, _R, _A2, nt.float64, _K, _V, _K,
                                                  _O3)),
    'moving_jacobian_batch': ('floating_base', (_I, _R, _R, _R, nt.boolean, _R, _A2,
                                                nt.float64, _K, _V, _K, _O3)),
    'moving_jacobian_derivative_batch': ('floating_base', (
        _I, _R, _R, _R, nt.boolean, _R, _A2, _A2, nt.float64, _K, _V, _K, _O3)),
    'moving_acceleration_batch': ('floating_base', (
        _I, _R, _R, _R, nt.boolean, _R, _A2, _A2, _A2, nt.float64, _K, _V, _K, _O2)),
    'moving_hessian_batch': ('floating_base', (_I, _R, _R, _R, nt.boolean, _R, _A2, nt.float64,
                                               _K, _V, _K, _O3)),
    'moving_link_pose_batch': ('floating_base', (_I, _R, _R, _R, nt.boolean, _R, _A2,
                                                 nt.float64, _K, _O3)),
    'moving_link_poses_batch': ('floating_base', (_I, _R, _R, _R, nt.boolean, _R, _A2,
                                                  nt.float64, _O4)),
    'moving_center_of_mass_batch': ('floating_base', (_I, _R, _R, nt.boolean, _R, _A2,
                                                      nt.float64, _O2)),
    'moving_center_of_mass_jacobian_batch': ('floating_base', (_I, _R, _R, nt.boolean, _R, _A2,
                                                               nt.float64, _O3)),
    'moving_centroidal_momentum_matrix_batch': ('floating_base', (
        _I, _R, _R, nt.boolean, _R, _A2, nt.float64, _O3)),
    'moving_coriolis_star_batch': ('floating_base', (_I, _R, nt.boolean, _R, _A2, nt.float64,
                                                     _O3)),
    'moving_coriolis_matrix_batch': ('floating_base', (_I, _R, nt.boolean, _R, _A2, _A2,
                                                       nt.float64, _O3)),
    'base_brackets': ('floating_base', (nt.boolean, _A2, _O3)),
    'base_integrate_jacobians': ('floating_base', (nt.boolean, _A2, _O3, _O3)),
    'moving_integrate_batch': ('floating_base', (nt.boolean, _A2, _A2, nt.float64, nt.float64,
                                                 _O2)),
    'moving_difference_batch': ('floating_base', (nt.boolean, _A2, _A2, nt.float64, _O2)),
    'moving_mass_matrix_derivative': ('floating_base', (_I, _R, nt.boolean, _R, _V, nt.float64,
                                                        _O3)),
    'moving_mass_matrix_derivative_batch': ('floating_base', (_I, _R, nt.boolean, _R, _A2,
                                                              nt.float64, _O4)),
    'coupled_mass_matrix_derivative': ('coupled', (_I, _R, _R, _V, _O3)),
    'coupled_mass_matrix_derivative_batch': ('coupled', (_I, _R, _R, _A2, _O4)),
    'moving_contact_terms': ('floating_base', (
        _I, _R, _R, _R, nt.boolean, _R, _V, _V, nt.float64, nt.int64[::1], _R, nt.int64[::1],
        nt.int64[::1], _O2, _O1)),
    'moving_contact_terms_batch': ('floating_base', (
        _I, _R, _R, _R, nt.boolean, _R, _A2, _A2, nt.float64, nt.int64[::1], _R,
        nt.int64[::1], nt.int64[::1], _O3, _O2)),
    'fixed_contact_terms_batch': ('floating_base', (
        _I, _R, _R, _R, _A2, _A2, nt.int64[::1], _R, nt.int64[::1], nt.int64[::1], _O3, _O2)),
    'moving_regressor': ('floating_base', (_I, _R, _R, nt.boolean, _R, _V, _V, _V, nt.float64,
                                           _O2)),
    'moving_regressor_batch': ('floating_base', (_I, _R, _R, nt.boolean, _R, _A2, _A2, _A2,
                                                 nt.float64, _O3)),
    'coupled_crba': ('coupled', (_I, _R, _R, _V, _V, _O2)),
    'coupled_rnea': ('coupled', (_I, _R, _R, _V, _V, _V, _V, nt.int64, _O1)),
    'coupled_forward_dynamics': ('coupled', (_I, _R, _R, _V, _V, _V, _V, _O1)),
    'coupled_forward_dynamics_batch': ('coupled', (_I, _R, _R, _V, _A2, _A2, _A2, _O2)),
    'coupled_jacobian': ('coupled', (_I, _R, _R, _R, _K, _V, _V, _K, _O2)),
    'coupled_jacobian_derivative': ('coupled', (_I, _R, _R, _R, _K, _V, _V, _V, _K, _O2)),
    'coupled_acceleration': ('coupled', (_I, _R, _R, _R, _K, _V, _V, _V, _V, _K, _O1)),
    'coupled_link_poses': ('coupled', (_I, _R, _R, _R, _V, _O3)),
    'coupled_center_of_mass': ('coupled', (_I, _R, _R, _V, nt.boolean, _O1)),
    'coupled_center_of_mass_jacobian': ('coupled', (_I, _R, _R, _V, nt.boolean, _O2)),
    'coupled_link_pose': ('coupled', (_I, _R, _R, _R, _K, _V, _O2)),
    'coupled_rk4': ('coupled', (_I, _R, _R, _V, _V, _V, _V, _V, nt.float64, nt.int64, _O2)),
    'coupled_rk4_batch': ('coupled', (_I, _R, _R, _V, _A2, _A2, _A2, _V, nt.float64, nt.int64,
                                      _O3)),
    'coupled_hessian': ('coupled', (_I, _R, _R, _R, _K, _V, _V, _K, _O2)),
    'coupled_coriolis_star': ('coupled', (_I, _R, _R, _V, _O2)),
    'coupled_coriolis_matrix': ('coupled', (_I, _R, _R, _V, _V, _O2)),
    'coupled_centroidal_momentum_matrix': ('coupled', (_I, _R, _R, _V, _O2)),
    'rnea_derivatives': ('rnea_derivatives', (_I, _R, _V, _V, _V, _O3)),
    'rnea_derivatives_batch': ('rnea_derivatives', (_I, _R, _A2, _A2, _A2, _O4)),
    'forward_dynamics_derivatives': ('rnea_derivatives', (_I, _R, _V, _V, _V, _O3)),
    'forward_dynamics_derivatives_batch': ('rnea_derivatives', (_I, _R, _A2, _A2, _A2, _O4)),
    'mass_matrix_derivative': ('coriolis_star', (_I, _R, _V, _O3)),
    'mass_matrix_derivative_batch': ('coriolis_star', (_I, _R, _A2, _O4)),
    'coupled_rnea_derivatives': ('rnea_derivatives', (_I, _R, _R, _V, _V, _V, _V, _O3)),
    'coupled_forward_dynamics_derivatives': ('rnea_derivatives', (_I, _R, _R, _V, _V, _V,
                                                                  _V, _O3)),
    'coupled_rnea_derivatives_batch': ('rnea_derivatives', (_I, _R, _R, _V, _A2, _A2, _A2,
                                                            _O4)),
    'coupled_forward_dynamics_derivatives_batch': ('rnea_derivatives', (
        _I, _R, _R, _V, _A2, _A2, _A2, _O4)),
    'floating_corrections': ('rnea_derivatives', (_V, _V, _O3)),
    'floating_rnea_derivatives': ('rnea_derivatives', (_I, _R, _R, _V, _V, _V, nt.float64,
                                                       _O3)),
    'floating_forward_dynamics_derivatives': ('rnea_derivatives', (
        _I, _R, _R, _V, _V, _V, nt.float64, _O3)),
    'floating_rnea_derivatives_batch': ('rnea_derivatives', (
        _I, _R, _R, _A2, _A2, _A2, nt.float64, _O4)),
    'floating_forward_dynamics_derivatives_batch': ('rnea_derivatives', (
        _I, _R, _R, _A2, _A2, _A2, nt.float64, _O4)),
    'moving_rnea_derivatives': ('rnea_derivatives', (
        _I, _R, _R, nt.boolean, _R, _V, _V, _V, _V, nt.float64, _O3)),
    'moving_forward_dynamics_derivatives': ('rnea_derivatives', (
        _I, _R, _R, nt.boolean, _R, _V, _V, _V, _V, nt.float64, _O3)),
    'moving_rnea_derivatives_batch': ('rnea_derivatives', (
        _I, _R, _R, nt.boolean, _R, _V, _A2, _A2, _A2, nt.float64, _O4)),
    'moving_forward_dynamics_derivatives_batch': ('rnea_derivatives', (
        _I, _R, _R, nt.boolean, _R, _V, _A2, _A2, _A2, nt.float64, _O4)),
    'center_of_mass': ('center_of_mass', (_I, _R, _V, nt.boolean, _O1)),
    'center_of_mass_batch': ('center_of_mass', (_I, _R, _A2, nt.boolean, _O2)),
    'center_of_mass_jacobian': ('center_of_mass', (_I, _R, _V, nt.boolean, _O2)),
    'center_of_mass_jacobian_batch': ('center_of_mass', (_I, _R, _A2, nt.boolean, _O3)),
    # the derivatives of constrained forward dynamics: one contact's terms, the KKT solve
    # (kkt_solve returns an int64 code)
    'contact_derivative_terms': ('constrained_dynamics_derivatives', (
        _R, _I, nt.int64[::1], nt.int64, _V, _V, _O3, nt.int64[::1], _R, nt.int64[::1],
        nt.int64[::1], _V, _O2, _O2, _O2, _O2)),
    'kkt_solve': ('constrained_dynamics_derivatives', (_R, _R, _A2, _A2, _R, _R, _R, _O2, _O2)),
    'constrained_derivatives': ('constrained_dynamics_derivatives', (
        _R, _I, nt.int64[::1], nt.int64, _V, _V, _O3, nt.int64[::1], _R, nt.int64[::1],
        nt.int64[::1], _V, _R, nt.boolean, _A2, _A2, _A2, _O2, _O2)),
    'constrained_derivatives_batch': ('constrained_dynamics_derivatives', (
        _R, _I, nt.int64[::1], nt.int64, _A2, _A2, nt.float64[:, :, :, ::1], nt.int64[::1], _R,
        nt.int64[::1], nt.int64[::1], _A2, _R, nt.boolean, _A3, _A3, _A3, _O3, _O3, _OK)),
}


def entry_point(name: str):
    """Return the compiled entry point of a kernel for its SIGNATURES types."""
    try:
        module, signature = SIGNATURES[name]
    except KeyError:
        raise AttributeError(f'no kernel entry point {name!r}; choose one of '
                             f'{sorted(SIGNATURES)}') from None
    kernel = getattr(import_module(f'{__package__}.{module}'), name)
    return kernel.compile(signature)
